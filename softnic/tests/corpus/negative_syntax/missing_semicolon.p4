// expect: 4:1: error: syntax error, unexpected CONST
#include <core.p4>
const bit<8> X = 5
const bit<8> Y = 6;
