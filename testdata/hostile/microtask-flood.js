// want: timeout
for (;;) await null
