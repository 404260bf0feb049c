// header.c compiled as C++ (C++11, C++17, C++20): the same checks in the other language.
#include "header.c"
