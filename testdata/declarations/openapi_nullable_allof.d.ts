type UpdatePetPet = {
  name: string;
  tag?: string;
};
type UpdatePetInput = {
  pet: UpdatePetPet & {
    id: number;
  };
  note?: string | null;
};
declare function update_pet(args: UpdatePetInput): unknown;
