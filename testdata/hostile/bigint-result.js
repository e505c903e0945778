// want: js
return 10n
