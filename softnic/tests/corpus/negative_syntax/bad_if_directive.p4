// expect: 2:8: error: operator '+' has no right operand
#if 1 +
const bit<8> X = 1;
#endif
