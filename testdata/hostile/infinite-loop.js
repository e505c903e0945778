// want: timeout
for (;;) {}
