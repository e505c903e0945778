type StatusInput = {
  status?: "active" | "inactive" | "pending";
};
declare function status(args: StatusInput): unknown;
