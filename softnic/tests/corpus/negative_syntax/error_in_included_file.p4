// expect: broken_header.p4h:5:1: error: syntax error, unexpected }
#include "broken_header.p4h"
const bit<8> X = 1;
