// want: timeout
const a = Array.from({ length: 2000 }, (_, i) => (i * 7919) % 2000)
for (;;) a.slice().sort((x, y) => x - y)
