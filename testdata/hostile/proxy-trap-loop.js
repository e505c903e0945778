// want: timeout
return new Proxy({}, { ownKeys() { for (;;) {} } })
