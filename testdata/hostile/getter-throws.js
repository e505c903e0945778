// want: js
return { get x() { throw new Error('nope') } }
