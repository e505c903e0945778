// want: js
throw new Error('out of memory')
