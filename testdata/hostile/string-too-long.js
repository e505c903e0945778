// want: js
let s = 'x'
for (;;) s += s
