#include <cstdio>
int main() { std::puts("capstan: under construction"); return 0; }
