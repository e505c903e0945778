// want: timeout
try { while (true) {} } catch {}
return 'escaped'
