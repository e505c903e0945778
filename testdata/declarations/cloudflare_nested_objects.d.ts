type PersonInput = {
  address?: {
    street: string;
    zip?: string;
  };
};
declare function person(args: PersonInput): unknown;
