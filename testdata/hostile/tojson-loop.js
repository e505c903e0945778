// want: timeout
return { toJSON() { for (;;) {} } }
