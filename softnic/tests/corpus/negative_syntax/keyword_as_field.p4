// expect: 3:12: error: syntax error, unexpected TABLE
struct s_t {
    bit<8> table;
}
