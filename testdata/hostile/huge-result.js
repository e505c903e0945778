// want: js
return 'x'.repeat(2 << 20)
