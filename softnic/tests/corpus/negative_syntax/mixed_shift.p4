// expect: 4:17: error: syntax error, unexpected >
control C(inout bit<8> x) {
    apply {
        x = x > > 1;
    }
}
