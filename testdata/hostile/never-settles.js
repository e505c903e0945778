// want: pending_promise
return new Promise(() => {})
