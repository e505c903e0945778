// want: timeout
for (;;) new Function('return 1')
