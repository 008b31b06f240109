// The console builds to dist/ with relative asset paths (served at / offline, from S3 behind CloudFront on AWS).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: { outDir: "dist", target: "es2022", assetsInlineLimit: 0, sourcemap: false },
});
