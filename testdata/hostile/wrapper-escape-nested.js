// want: js
}}}); (async () => { { {
