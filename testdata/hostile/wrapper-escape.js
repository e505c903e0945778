// want: js
}); (async () => {
