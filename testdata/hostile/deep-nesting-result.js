// want: js
let a = []
for (let i = 0; i < 20000; i++) a = [a]
return a
