// want: js
const o = {}, v = 'v'.repeat(24)
for (let i = 0; i < 40000; i++) o['k' + i] = v
return o
