type GetWeatherInput = {
  /** City name */
  city: string;
  units?: "celsius" | "fahrenheit";
};
/** Get weather for a city */
declare function getWeather(args: GetWeatherInput): Promise<unknown>;
