type GetUserInput = {
  id?: string;
};
declare function get_user(args: GetUserInput): unknown;

type GetUser2Input = {
  id?: number;
};
declare function getUser(args: GetUser2Input): unknown;
