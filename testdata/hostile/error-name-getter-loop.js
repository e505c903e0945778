// want: timeout
const e = new Error('x')
Object.defineProperty(e, 'name', { get() { for (;;) {} } })
throw e
