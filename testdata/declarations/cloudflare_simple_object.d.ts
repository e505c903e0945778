type UserInput = {
  name: string;
  age?: number;
};
declare function user(args: UserInput): unknown;
