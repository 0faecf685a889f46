// expect: 4:13: error: syntax error, unexpected =
control C(inout bit<8> x) {
    apply {
        x = = 1;
    }
}
