// want: timeout
const loop = () => { Promise.resolve().then(loop) }
loop()
await new Promise(() => {})
