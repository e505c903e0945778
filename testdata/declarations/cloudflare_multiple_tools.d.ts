type SearchInput = {
  query: string;
  limit?: number;
};
/** Search for items */
declare function search(args: SearchInput): Promise<unknown>;

type GetItemInput = {
  id: string;
};
/** Get an item by ID */
declare function get_item(args: GetItemInput): Promise<unknown>;
