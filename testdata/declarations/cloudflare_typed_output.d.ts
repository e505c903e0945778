type GetUserInput = {
  id: string;
};
type GetUserOutput = {
  name: string;
  email: string;
};
/** Get a user */
declare function getUser(args: GetUserInput): Promise<GetUserOutput>;
