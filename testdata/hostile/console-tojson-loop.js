// want: timeout
console.log({ toJSON() { for (;;) {} } })
