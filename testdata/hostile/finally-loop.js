// want: timeout
try { for (;;) {} } finally { return 'escaped' }
