// expect: 4:32: error: syntax error, unexpected INTEGER "2"
#define W 8
const bit<W> OK = 1;
const   bit<8>    X   =   1    2;
