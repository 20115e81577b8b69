// ESLint for the extension's sources and tests (`make lint`): typescript-eslint's type-checked recommended rules,
// plus the ones that catch real bugs in an extension host (promises nobody awaits or handles, async callbacks where
// VS Code expects a plain function) and type-only imports, so a pure module never loads `vscode` at run time.
// Formatting is Prettier's (.prettierrc.json), not ESLint's.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "python/**", "node_modules/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-import-type-side-effects": "error",
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      // An async callback that has nothing to await still keeps a Promise-returning contract (fakes in tests, queued
      // steps); requiring an await there only adds noise.
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      eqeqeq: "error",
    },
  },
  {
    // Generated from the pydantic models (`make protocol`): an empty params model is an empty interface there.
    files: ["src/protocol.ts"],
    rules: { "@typescript-eslint/no-empty-object-type": "off" },
  },
  {
    files: ["**/*.mjs"],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
