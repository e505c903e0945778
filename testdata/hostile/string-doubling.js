// want: memory_exceeded
let s = 'x'
for (;;) { s += s; s.charCodeAt(s.length - 1) }
