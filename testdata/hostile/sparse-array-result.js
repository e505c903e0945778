// want: memory_exceeded
const a = []
a.length = 2 ** 32 - 1
return a
