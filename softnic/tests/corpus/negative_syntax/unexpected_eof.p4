// expect: 6:1: error: syntax error, unexpected end of file
control C(inout bit<8> x) {
    apply {
        x = 1;
    }
