// want: js
function r(n) { return r(n + 1) + 1 }
return r(0)
