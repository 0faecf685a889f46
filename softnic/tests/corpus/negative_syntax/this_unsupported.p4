// expect: 4:9: error: 'this' is not supported by softnic
control C(inout bit<8> x) {
    apply {
        this.x = 1;
    }
}
