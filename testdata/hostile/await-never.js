// want: pending_promise
await new Promise(() => {})
return 'unreachable'
