// expect: 4:5: error: syntax error, unexpected BIT
header h_t {
    bit<8> a
    bit<8> b;
}
