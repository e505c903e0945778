// want: pending_promise
Promise.reject(new Error('ignored'))
await new Promise(() => {})
