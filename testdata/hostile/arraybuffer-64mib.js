// want: memory_exceeded
new ArrayBuffer(64 * 1024 * 1024)
return 'allocated'
