// want: memory_exceeded
const a = []
for (;;) a.push(new Array(1000).fill(1))
