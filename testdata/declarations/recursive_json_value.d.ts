type StoreValueJson = string | number | boolean | null | StoreValueJson[] | { [key: string]: StoreValueJson };
type StoreValueInput = {
  key: string;
  value: StoreValueJson;
};
declare function store_value(args: StoreValueInput): unknown;
