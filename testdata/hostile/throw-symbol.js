// want: js
throw Symbol('s')
