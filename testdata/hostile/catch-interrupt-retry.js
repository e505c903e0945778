// want: timeout
for (;;) { try { for (;;) {} } catch (e) {} }
