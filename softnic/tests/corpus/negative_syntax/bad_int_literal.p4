// expect: 2:18: error: invalid integer literal 8w
const bit<8> X = 8w;
