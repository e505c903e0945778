declare function empty(): unknown;
