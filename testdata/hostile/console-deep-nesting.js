// want: js
let a = []
for (let i = 0; i < 20000; i++) a = [a]
console.log(a)
const o = {}
let c = o
for (let i = 0; i < 20000; i++) c = c.next = {}
console.log(o, [o], {o})
throw new Error('logged both')
