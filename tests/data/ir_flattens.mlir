module @IrToHlo.77 {
  func.func @main(%arg0: tensor<2x64x768xf32>, %arg1: tensor<768x2304xf32>, %arg2: tensor<50x768xf32>, %arg3: tensor<128xui32>) -> tensor<128x2304xf32> {
    %0 = "stablehlo.gather"(%arg2, %arg3) : (tensor<50x768xf32>, tensor<128xui32>) -> tensor<128x768xf32>
    %1 = stablehlo.reshape %arg0 : (tensor<2x64x768xf32>) -> tensor<1x128x768xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<128xf32>
    %output, %mean, %var = "stablehlo.batch_norm_training"(%1, %cst, %cst) <{epsilon = 9.99999974E-6 : f32, feature_index = 1 : i64}> : (tensor<1x128x768xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<1x128x768xf32>, tensor<128xf32>, tensor<128xf32>)
    %2 = stablehlo.reshape %arg0 : (tensor<2x64x768xf32>) -> tensor<128x768xf32>
    %3 = stablehlo.dot_general %2, %arg1, contracting_dims = [1] x [0] : (tensor<128x768xf32>, tensor<768x2304xf32>) -> tensor<128x2304xf32>
    return %3 : tensor<128x2304xf32>
  }
}
