// want: timeout
eval('for (;;) {}')
