// want: memory_exceeded
let a = []
try { for (;;) a.push(new Array(100000).fill(1)) } catch (e) { a = null; return 'caught ' + e.message }
